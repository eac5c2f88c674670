; Regression (fuzz campaign 2026-12-05, llvm-stress seed 4269808793): folding
; the users of a guard check that SCEV proves met visited a user twice, or
; one an earlier fold had erased (use after free, a crash in
; simplifyInstruction). The pass must run, and leave valid IR.
; RUN: opt %loadaccel -passes='accel-masked-load,verify' -disable-output %s

; ModuleID = '/tmp/autogen.bc'
source_filename = "/tmp/autogen.bc"

define void @autogen_SD4269808793(ptr %0, ptr %1, ptr %2, i32 %3, i64 %4, i8 %5) {
BB:
  %A4 = alloca float, align 4
  %A3 = alloca double, align 8
  %A2 = alloca i8, align 1
  %A1 = alloca i64, align 8
  %A = alloca i32, align 4
  %L = load <4 x i1>, ptr %0, align 1
  store i64 %4, ptr %A3, align 4
  %E = extractelement <4 x i8> zeroinitializer, i32 425783
  %Shuff = shufflevector <4 x i8> zeroinitializer, <4 x i8> zeroinitializer, <4 x i32> <i32 1, i32 3, i32 5, i32 poison>
  %I = insertelement <4 x i8> zeroinitializer, i8 11, i32 %3
  %B = xor i8 %E, -77
  %ZE = zext <4 x i1> zeroinitializer to <4 x i64>
  %Sl = select i1 true, double 0xD1FDBA9C65FB441A, double 0x6D59F8F807570876
  %Cmp = icmp sge i8 107, 107
  br label %CF201

CF201:                                            ; preds = %CF201, %CF228, %BB
  %L5 = load <1 x i8>, ptr %0, align 1
  store i64 289639, ptr %0, align 4
  %E6 = extractelement <4 x i8> zeroinitializer, i32 425783
  %Shuff7 = shufflevector <4 x i8> zeroinitializer, <4 x i8> %Shuff, <4 x i32> <i32 poison, i32 poison, i32 poison, i32 5>
  %I8 = insertelement <4 x i8> zeroinitializer, i8 11, i32 %3
  %Se = sext <4 x i8> %I8 to <4 x i64>
  %Sl9 = select i1 true, double 0xD1FDBA9C65FB441A, double 0x6D59F8F807570876
  %Cmp10 = fcmp one double %Sl9, %Sl
  br i1 %Cmp10, label %CF201, label %CF211

CF211:                                            ; preds = %CF211, %CF201
  %L11 = load float, ptr %0, align 4
  store <4 x float> <float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000>, ptr %0, align 16
  %E12 = extractelement <4 x i8> %Shuff7, i32 %3
  %Shuff13 = shufflevector <4 x i8> zeroinitializer, <4 x i8> zeroinitializer, <4 x i32> <i32 poison, i32 2, i32 4, i32 6>
  %I14 = insertelement <4 x i8> zeroinitializer, i8 79, i32 %3
  %Tr = trunc <4 x i8> %Shuff to <4 x i1>
  %Sl15 = select i1 %Cmp10, i32 %3, i32 %3
  %Cmp16 = icmp uge i16 -15957, 15015
  br i1 %Cmp16, label %CF211, label %CF215

CF215:                                            ; preds = %CF215, %CF211
  %L17 = load i1, ptr %0, align 1
  br i1 %L17, label %CF215, label %CF228

CF228:                                            ; preds = %CF215
  store <8 x float> <float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000>, ptr %0, align 32
  %E18 = extractelement <4 x i1> zeroinitializer, i32 212175
  br i1 %E18, label %CF201, label %CF209

CF209:                                            ; preds = %CF209, %CF228
  %Shuff19 = shufflevector <4 x i8> zeroinitializer, <4 x i8> %Shuff, <4 x i32> <i32 4, i32 poison, i32 poison, i32 2>
  %I20 = insertelement <4 x i8> %Shuff7, i8 %5, i32 425783
  %Se21 = sext i8 %B to i32
  %Sl22 = select i1 %Cmp10, i8 %B, i8 11
  %Cmp23 = icmp eq i16 17095, -13749
  br i1 %Cmp23, label %CF209, label %CF216

CF216:                                            ; preds = %CF209
  %L24 = load i1, ptr %0, align 1
  br label %CF198

CF198:                                            ; preds = %CF198, %CF220, %CF210, %CF222, %CF216
  store <4 x float> <float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000>, ptr %0, align 16
  %E25 = extractelement <4 x i8> zeroinitializer, i32 226479
  %Shuff26 = shufflevector <4 x i8> zeroinitializer, <4 x i8> %Shuff, <4 x i32> <i32 4, i32 6, i32 0, i32 poison>
  %I27 = insertelement <4 x i8> %Shuff26, i8 -77, i32 %3
  %B28 = frem float 0xC1A1FA85C0000000, 0xC1A1FA85C0000000
  %Tr29 = trunc i64 289639 to i16
  %Sl30 = select i1 %Cmp16, ptr %1, ptr %0
  %Cmp31 = icmp sge i8 %E25, %Sl22
  br i1 %Cmp31, label %CF198, label %CF220

CF220:                                            ; preds = %CF198
  %L32 = load double, ptr %Sl30, align 8
  store <1 x float> zeroinitializer, ptr %Sl30, align 4
  %E33 = extractelement <4 x i8> zeroinitializer, i32 226479
  %Shuff34 = shufflevector <4 x i64> %Se, <4 x i64> %ZE, <4 x i32> <i32 1, i32 3, i32 5, i32 poison>
  %I35 = insertelement <2 x i16> zeroinitializer, i16 15015, i32 %3
  %B36 = and i64 %4, %4
  %PC = bitcast ptr %A to ptr
  %Sl37 = select i1 true, double 0xA5ED3A8C91EB1C0A, double 0x39DD7A7C7DDBB3FA
  %Cmp38 = fcmp uge double 0x39DD7A7C7DDBB3FA, 0x39DD7A7C7DDBB3FA
  br i1 %Cmp38, label %CF198, label %CF207

CF207:                                            ; preds = %CF207, %CF224, %CF220
  %L39 = load float, ptr %Sl30, align 4
  store <4 x i16> <i16 0, i16 -1, i16 0, i16 -1>, ptr %Sl30, align 8
  %E40 = extractelement <2 x i16> %I35, i32 %Se21
  %Shuff41 = shufflevector <4 x i8> zeroinitializer, <4 x i8> zeroinitializer, <4 x i32> <i32 0, i32 poison, i32 poison, i32 6>
  %I42 = insertelement <4 x i8> %I14, i8 %5, i32 %Sl15
  %B43 = sdiv <2 x i16> %I35, zeroinitializer
  %Tr44 = trunc i16 17095 to i8
  %Sl45 = select i1 %Cmp, i8 %Tr44, i8 %E12
  %Cmp46 = icmp ult <1 x i8> %L5, %L5
  %L47 = load double, ptr %Sl30, align 8
  store <8 x i8> <i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1>, ptr %0, align 8
  %E48 = extractelement <4 x i8> %I8, i32 %3
  %Shuff49 = shufflevector <4 x i1> zeroinitializer, <4 x i1> zeroinitializer, <4 x i32> <i32 4, i32 6, i32 0, i32 poison>
  %I50 = insertelement <4 x i8> %Shuff41, i8 107, i32 %3
  %B51 = urem i32 %3, %3
  %Se52 = sext <4 x i1> %L to <4 x i16>
  %Sl53 = select i1 %Cmp, ptr %1, ptr %0
  %Cmp54 = icmp sgt <4 x i8> %Shuff, %Shuff
  %L55 = load i64, ptr %Sl30, align 4
  store <4 x double> <double 0.000000e+00, double 0xFFFFFFFFFFFFFFFF, double 0.000000e+00, double 0xFFFFFFFFFFFFFFFF>, ptr %Sl30, align 32
  %E56 = extractelement <4 x i8> zeroinitializer, i32 %Se21
  %Shuff57 = shufflevector <4 x i64> %Shuff34, <4 x i64> %ZE, <4 x i32> <i32 6, i32 poison, i32 2, i32 4>
  %I58 = insertelement <4 x i64> %ZE, i64 289639, i32 %Sl15
  %B59 = srem i8 %E48, %Tr44
  %Se60 = sext <4 x i1> zeroinitializer to <4 x i16>
  %Sl61 = select <4 x i1> %Shuff49, <4 x i1> %L, <4 x i1> zeroinitializer
  %Cmp62 = icmp eq i1 %L17, %Cmp31
  br i1 %Cmp62, label %CF207, label %CF224

CF224:                                            ; preds = %CF207
  %L63 = load <2 x i32>, ptr %Sl30, align 8
  store i16 -15957, ptr %Sl30, align 2
  %E64 = extractelement <4 x i1> %Shuff49, i32 %3
  br i1 %E64, label %CF207, label %CF210

CF210:                                            ; preds = %CF224
  %Shuff65 = shufflevector <4 x i8> %Shuff26, <4 x i8> zeroinitializer, <4 x i32> <i32 poison, i32 7, i32 1, i32 3>
  %I66 = insertelement <4 x i8> zeroinitializer, i8 %E56, i32 %Sl15
  %B67 = sub <4 x i8> %I20, %Shuff65
  %FC = sitofp <4 x i64> %Shuff57 to <4 x float>
  %Sl68 = select i1 %Cmp62, ptr %A4, ptr %Sl53
  %L69 = load i16, ptr %Sl68, align 2
  store <16 x float> <float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000, float 0.000000e+00, float 0xFFFFFFFFE0000000>, ptr %Sl30, align 64
  %E70 = extractelement <4 x i8> %I8, i32 %B51
  %Shuff71 = shufflevector <4 x i8> %Shuff65, <4 x i8> zeroinitializer, <4 x i32> <i32 2, i32 4, i32 6, i32 poison>
  %I72 = insertelement <4 x i8> zeroinitializer, i8 -77, i32 %B51
  %B73 = shl <2 x i32> %L63, %L63
  %Se74 = sext <4 x i8> %B67 to <4 x i32>
  %Sl75 = select i1 true, i8 %E56, i8 %E48
  %Cmp76 = icmp ule <4 x i8> %I20, %Shuff41
  %L77 = load i64, ptr %Sl30, align 4
  %E78 = extractelement <4 x i8> %I27, i32 %3
  %Shuff79 = shufflevector <4 x i8> zeroinitializer, <4 x i8> zeroinitializer, <4 x i32> <i32 7, i32 poison, i32 3, i32 5>
  %I80 = insertelement <4 x i8> zeroinitializer, i8 %Sl75, i32 %Sl15
  %FC81 = fptosi double 0x39DD7A7C7DDBB3FA to i16
  %Sl82 = select i1 true, i8 %E, i8 -77
  %Cmp83 = icmp sge i16 -15957, %Tr29
  br i1 %Cmp83, label %CF198, label %CF205

CF205:                                            ; preds = %CF205, %CF210
  %L84 = load <8 x i1>, ptr %PC, align 1
  store i32 %3, ptr %A, align 4
  %E85 = extractelement <4 x i8> %B67, i32 226479
  %Shuff86 = shufflevector <4 x i1> %L, <4 x i1> %Tr, <4 x i32> <i32 3, i32 5, i32 poison, i32 1>
  %I87 = insertelement <4 x i8> %I8, i8 %E56, i32 %Sl15
  %B88 = lshr i8 %E78, %E85
  %Se89 = sext i8 %Sl45 to i32
  %Sl90 = select i1 %Cmp, i8 %E33, i8 %Sl75
  %L91 = load <1 x i32>, ptr %Sl30, align 4
  store double 0x39DD7A7C7DDBB3FA, ptr %Sl68, align 8
  %E92 = extractelement <4 x i1> zeroinitializer, i32 %Se89
  br i1 %E92, label %CF205, label %CF213

CF213:                                            ; preds = %CF213, %CF205
  %Shuff93 = shufflevector <2 x i16> zeroinitializer, <2 x i16> zeroinitializer, <2 x i32> <i32 3, i32 poison>
  %I94 = insertelement <1 x i32> %L91, i32 %Se89, i32 %Sl15
  %B95 = fadd double %Sl, 0x39DD7A7C7DDBB3FA
  %FC96 = fptoui float 0xC223E587C0000000 to i16
  %Sl97 = select i1 %Cmp83, i8 %B88, i8 %B
  %Cmp98 = icmp eq i1 %Cmp16, true
  br i1 %Cmp98, label %CF213, label %CF217

CF217:                                            ; preds = %CF217, %CF213
  %L99 = load i8, ptr %0, align 1
  %E100 = extractelement <4 x i1> %L, i32 425783
  br i1 %E100, label %CF217, label %CF222

CF222:                                            ; preds = %CF217
  %Shuff101 = shufflevector <4 x i1> zeroinitializer, <4 x i1> %Shuff49, <4 x i32> <i32 poison, i32 1, i32 poison, i32 5>
  %I102 = insertelement <4 x i1> zeroinitializer, i1 true, i32 %Sl15
  %B103 = srem i32 %Se89, 212175
  %Sl104 = select i1 %Cmp, ptr %Sl30, ptr %Sl53
  %Cmp105 = icmp ugt <4 x i8> %Shuff7, %I42
  %L106 = load <1 x i64>, ptr %Sl30, align 8
  store i64 %B36, ptr %0, align 4
  %E107 = extractelement <4 x i8> zeroinitializer, i32 226479
  %Shuff108 = shufflevector <2 x i16> %Shuff93, <2 x i16> %I35, <2 x i32> <i32 3, i32 1>
  %I109 = insertelement <4 x i8> %I, i8 %Sl82, i32 %B51
  %B110 = sdiv <4 x i8> %I80, %Shuff
  %Tr111 = trunc <2 x i32> %L63 to <2 x i16>
  %Sl112 = select i1 %Cmp31, float 0xC223E587C0000000, float 0xC1A1FA85C0000000
  %Cmp113 = icmp sgt i1 %Cmp98, true
  br i1 %Cmp113, label %CF198, label %CF203

CF203:                                            ; preds = %CF203, %CF226, %CF221, %CF222
  %L114 = load i1, ptr %Sl53, align 1
  br i1 %L114, label %CF203, label %CF226

CF226:                                            ; preds = %CF203
  store <4 x double> <double 0.000000e+00, double 0xFFFFFFFFFFFFFFFF, double 0.000000e+00, double 0xFFFFFFFFFFFFFFFF>, ptr %Sl30, align 32
  %E115 = extractelement <4 x i1> zeroinitializer, i32 %B51
  br i1 %E115, label %CF203, label %CF221

CF221:                                            ; preds = %CF226
  %Shuff116 = shufflevector <4 x i8> %Shuff41, <4 x i8> zeroinitializer, <4 x i32> <i32 0, i32 2, i32 4, i32 poison>
  %I117 = insertelement <4 x i8> %Shuff, i8 %Sl97, i32 212175
  %Tr118 = trunc <4 x i16> %Se52 to <4 x i1>
  %Sl119 = select <4 x i1> zeroinitializer, <4 x i64> %ZE, <4 x i64> %Shuff34
  %Cmp120 = fcmp ogt float 0xC1A1FA85C0000000, 0xC1A1FA85C0000000
  br i1 %Cmp120, label %CF203, label %CF206

CF206:                                            ; preds = %CF221
  %L121 = load <4 x i64>, ptr %Sl68, align 32
  store i16 15015, ptr %Sl104, align 2
  %E122 = extractelement <4 x i8> %Shuff41, i32 %B51
  %Shuff123 = shufflevector <4 x i64> %Shuff34, <4 x i64> %Sl119, <4 x i32> <i32 5, i32 poison, i32 poison, i32 3>
  %I124 = insertelement <4 x i8> zeroinitializer, i8 79, i32 %Se89
  %B125 = add <4 x i64> %ZE, %Sl119
  %FC126 = sitofp <4 x i8> %I50 to <4 x float>
  %Sl127 = select i1 %Cmp83, <4 x i64> %Se, <4 x i64> %Sl119
  %L128 = load <4 x i64>, ptr %Sl30, align 32
  store i16 -13749, ptr %0, align 2
  %E129 = extractelement <4 x i8> %Shuff19, i32 %B51
  %Shuff130 = shufflevector <4 x i64> %Sl119, <4 x i64> %Shuff34, <4 x i32> <i32 3, i32 5, i32 poison, i32 1>
  %I131 = insertelement <1 x i64> %L106, i64 289639, i32 %B51
  %B132 = sub <4 x i8> %I, zeroinitializer
  %FC133 = sitofp <4 x i1> %Shuff49 to <4 x double>
  %Sl134 = select i1 true, i1 %E100, i1 %Cmp98
  br label %CF

CF:                                               ; preds = %CF, %CF219, %CF208, %CF227, %CF200, %CF206
  %Cmp135 = fcmp ule <4 x double> %FC133, %FC133
  %L136 = load <1 x i1>, ptr %0, align 1
  store i64 %B36, ptr %Sl104, align 4
  %E137 = extractelement <4 x double> %FC133, i32 %B103
  %Shuff138 = shufflevector <4 x i8> %I42, <4 x i8> %I50, <4 x i32> <i32 1, i32 3, i32 5, i32 7>
  %I139 = insertelement <4 x i8> %Shuff71, i8 %E107, i32 %3
  %B140 = sub i8 %E70, %5
  %Tr141 = trunc i64 %4 to i8
  %Sl142 = select i1 %L114, i1 false, i1 true
  br i1 %Sl142, label %CF, label %CF214

CF214:                                            ; preds = %CF214, %CF
  %Cmp143 = icmp eq i8 %B88, %E122
  br i1 %Cmp143, label %CF214, label %CF218

CF218:                                            ; preds = %CF218, %CF223, %CF214
  %L144 = load <4 x double>, ptr %PC, align 32
  store i1 %Cmp62, ptr %Sl30, align 1
  %E145 = extractelement <2 x i16> %I35, i32 %3
  %Shuff146 = shufflevector <4 x i8> %Shuff71, <4 x i8> zeroinitializer, <4 x i32> <i32 5, i32 poison, i32 1, i32 3>
  %I147 = insertelement <1 x i32> %L91, i32 %Se89, i32 %B51
  %B148 = fdiv <4 x float> %FC126, %FC
  %FC149 = uitofp i8 %Sl45 to float
  %Sl150 = select i1 %Cmp120, i1 %Cmp62, i1 %Cmp62
  br i1 %Sl150, label %CF218, label %CF223

CF223:                                            ; preds = %CF218
  %Cmp151 = icmp uge i16 -1, 15015
  br i1 %Cmp151, label %CF218, label %CF219

CF219:                                            ; preds = %CF223
  %L152 = load float, ptr %0, align 4
  store <8 x i32> <i32 0, i32 -1, i32 0, i32 -1, i32 0, i32 -1, i32 0, i32 -1>, ptr %Sl68, align 32
  %E153 = extractelement <4 x i1> %Cmp105, i32 %3
  br i1 %E153, label %CF, label %CF204

CF204:                                            ; preds = %CF204, %CF225, %CF219
  %Shuff154 = shufflevector <4 x i8> %B110, <4 x i8> %Shuff41, <4 x i32> <i32 poison, i32 4, i32 6, i32 0>
  %I155 = insertelement <4 x i64> %Shuff130, i64 %4, i32 %Se21
  %B156 = mul i8 %E129, %E6
  %ZE157 = zext i1 %L114 to i16
  %Sl158 = select i1 %Cmp38, <4 x i8> %I20, <4 x i8> %B132
  %Cmp159 = icmp ugt i8 %Tr44, %E70
  br i1 %Cmp159, label %CF204, label %CF212

CF212:                                            ; preds = %CF212, %CF204
  %L160 = load float, ptr %0, align 4
  %E161 = extractelement <4 x i8> %Shuff154, i32 %B103
  %Shuff162 = shufflevector <4 x i8> %Shuff154, <4 x i8> %I8, <4 x i32> <i32 poison, i32 1, i32 3, i32 poison>
  %I163 = insertelement <4 x i64> %I58, i64 289639, i32 %Sl15
  %B164 = fdiv double %Sl9, %B95
  %PC165 = bitcast ptr %2 to ptr
  %Sl166 = select <4 x i1> zeroinitializer, <4 x i1> %Cmp54, <4 x i1> %Shuff49
  %Cmp167 = icmp sge i8 -53, %B156
  br i1 %Cmp167, label %CF212, label %CF225

CF225:                                            ; preds = %CF212
  %L168 = load <2 x float>, ptr %Sl68, align 8
  store i8 %E78, ptr %Sl53, align 1
  %E169 = extractelement <1 x i8> %L5, i32 425783
  %Shuff170 = shufflevector <4 x i8> %I139, <4 x i8> %I109, <4 x i32> <i32 3, i32 5, i32 7, i32 1>
  %I171 = insertelement <4 x i8> %Shuff19, i8 11, i32 226479
  %Se172 = sext <4 x i8> %Shuff138 to <4 x i16>
  %Sl173 = select i1 %Sl142, i32 226479, i32 %B51
  %Cmp174 = icmp sgt i8 %E78, %Sl22
  br i1 %Cmp174, label %CF204, label %CF208

CF208:                                            ; preds = %CF225
  %L175 = load i8, ptr %0, align 1
  store <16 x i8> <i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1, i8 0, i8 -1>, ptr %Sl104, align 16
  %E176 = extractelement <4 x i1> zeroinitializer, i32 226479
  br i1 %E176, label %CF, label %CF202

CF202:                                            ; preds = %CF202, %CF208
  %Shuff177 = shufflevector <4 x i64> %ZE, <4 x i64> %ZE, <4 x i32> <i32 poison, i32 2, i32 4, i32 poison>
  %I178 = insertelement <4 x i8> %Shuff154, i8 %E107, i32 %Sl15
  %B179 = fmul double 0x6D59F8F807570876, %L32
  %Sl180 = select i1 %E92, <4 x i8> %Shuff138, <4 x i8> %I109
  %Cmp181 = icmp slt i8 %E12, %E161
  br i1 %Cmp181, label %CF202, label %CF227

CF227:                                            ; preds = %CF202
  %L182 = load float, ptr %Sl53, align 4
  store <1 x double> zeroinitializer, ptr %Sl30, align 8
  %E183 = extractelement <4 x i64> %Shuff34, i32 %Sl173
  %Shuff184 = shufflevector <2 x i16> %I35, <2 x i16> zeroinitializer, <2 x i32> <i32 1, i32 3>
  %I185 = insertelement <4 x i8> %Shuff154, i8 %E169, i32 %Sl15
  %B186 = udiv <4 x i8> %Shuff13, %Shuff65
  %Se187 = sext i8 %E129 to i64
  %Sl188 = select i1 true, double 0xA5ED3A8C91EB1C0A, double %Sl
  %Cmp189 = icmp sge i8 %Sl75, %E56
  br i1 %Cmp189, label %CF, label %CF200

CF200:                                            ; preds = %CF227
  %L190 = load i16, ptr %Sl30, align 2
  store <2 x float> %L168, ptr %PC165, align 8
  %E191 = extractelement <4 x i8> %Shuff116, i32 %Sl173
  %Shuff192 = shufflevector <4 x i16> %Se52, <4 x i16> %Se52, <4 x i32> <i32 6, i32 poison, i32 2, i32 4>
  %I193 = insertelement <4 x i8> %I124, i8 %E, i32 %B51
  %B194 = sub i64 %Se187, %L77
  %Se195 = sext <4 x i8> %I124 to <4 x i16>
  %Sl196 = select i1 %Cmp83, i8 %E48, i8 %E191
  %Cmp197 = icmp sgt i8 %B, 79
  br i1 %Cmp197, label %CF, label %CF199

CF199:                                            ; preds = %CF200
  store i1 %Cmp, ptr %Sl30, align 1
  store i8 %E70, ptr %PC165, align 1
  store double %E137, ptr %PC, align 8
  store float %L182, ptr %Sl30, align 4
  store i8 %E191, ptr %Sl30, align 1
  ret void
}
